#!/usr/bin/python3
"""Declares a parameter twice."""
import _program

text = {"name": "text", "schema": {"type": "string"}}
_program.serve(declaration={"protocol": 1, "services": [{"name": "broken", "version": "1.0.0", "methods": [
    {"name": "add", "params": [text, text]}]}]})

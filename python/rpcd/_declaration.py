"""A handler program's declaration read with rpcd's rules (docs/HANDLER-PROTOCOL.md §3), for
rpcd-handler-check: the rules and messages of rpcd's HandlerProgramDeclaration.swift, the [Config] check of
ModuleHostServer.swift's configProblem, and the part of a schema rpcd enforces (RPCBinding's CompiledSchema:
`type`, `enum`, `minimum`, `maximum` at the top level). Keep in step with those files.

Pure functions; thread-agnostic. A refused declaration raises Refused with rpcd's reason."""

import math
import re

__all__ = ["Refused", "read_declaration", "config_problem", "schema_problem", "sample"]

RESERVED = range(-32768, -32000 + 1)
_SERVICE_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_MEMBER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
SERVICE_RULE = ("1 to 15 lower-case letters, digits and hyphens, with at least one letter, not starting or ending "
                "with a hyphen and without two hyphens in a row (RFC 6335)")
MEMBER_RULE = "a letter, then letters, digits and '_', at most 64 characters"


class Refused(Exception):
    """rpcd would refuse the declaration; the text is its reason."""


def _int(value):
    """JSONValue.intValue: an integer number (1, 1.0), never a boolean."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _number(value):
    return None if isinstance(value, bool) or not isinstance(value, (int, float)) else value


def _array(value):
    return value if isinstance(value, list) else None


def _get(value, key):
    return value.get(key) if isinstance(value, dict) else None


def _service_name(name):
    return (isinstance(name, str) and len(name.encode()) <= 15 and _SERVICE_NAME.fullmatch(name) is not None
            and any("a" <= c <= "z" for c in name))


def _member_name(name):
    return isinstance(name, str) and _MEMBER_NAME.fullmatch(name) is not None


class Method:
    """A declared method: `name`, `params` [{name, schema, required}], `read_only`, `concurrent`."""

    def __init__(self, name, params, read_only, concurrent):
        self.name, self.params, self.read_only, self.concurrent = name, params, read_only, concurrent


class Declaration:
    """A declaration rpcd accepts: `name` (the declared service), `methods`, `events` {name: schema},
    `config` (the declared keys, or None)."""

    def __init__(self, name, methods, events, config):
        self.name, self.methods, self.events, self.config = name, methods, events, config


def _param(param, what):
    name = _get(param, "name")
    if not _member_name(name):
        raise Refused(f"{what}'s 'name' must be a member name ({MEMBER_RULE})")
    schema = _get(param, "schema")
    return {"name": name, "schema": {} if schema is None else schema, "required": _get(param, "required") is not False}


def _method(method):
    name = _get(method, "name")
    if not _member_name(name):
        raise Refused(f"a method's 'name' must be a member name ({MEMBER_RULE})")
    declared = _array(_get(method, "params"))
    if declared is None:
        raise Refused(f"method '{name}' needs 'params' (an array)")
    params = []
    for param in declared:
        read = _param(param, f"method '{name}': a parameter")
        if any(p["name"] == read["name"] for p in params):
            raise Refused(f"method '{name}': parameter '{read['name']}' is declared twice")
        params.append(read)
    for error in _array(_get(method, "errors")) or []:
        code = _int(_get(error, "code"))
        if code is None or code in RESERVED or not isinstance(_get(error, "message"), str):
            raise Refused(f"method '{name}': an error needs an integer 'code' outside -32768…-32000 and a 'message'")
    return Method(name, params, _get(method, "readOnly") is True, _get(method, "concurrent") is True)


def read_declaration(result, protocol):
    """The Declaration in RESULT (the answer to rpcd.start), or Refused; PROTOCOL is the checker's own."""
    if not isinstance(result, dict):
        raise Refused("the declaration is not an object")
    version = _int(result.get("protocol"))
    if version is None or not 1 <= version <= protocol:
        raise Refused("'protocol' must be 1")
    services = _array(result.get("services"))
    if services is None or len(services) != 1:
        raise Refused("'services' must hold exactly one service")
    service = services[0]
    name = _get(service, "name")
    if not _service_name(name):
        raise Refused(f"the service's 'name' must be a service name ({SERVICE_RULE})")
    version = _get(service, "version")
    if not isinstance(version, str) or not version:
        raise Refused("the service needs a 'version'")
    declared = _array(_get(service, "methods"))
    if not declared:
        raise Refused("the service needs at least one method")
    methods = []
    for method in declared:
        read = _method(method)
        if any(m.name == read.name for m in methods):
            raise Refused(f"method '{read.name}' is declared twice")
        methods.append(read)
    events = {}
    for event in _array(_get(service, "events")) or []:
        event_name = _get(event, "name")
        if not _member_name(event_name):
            raise Refused(f"an event's 'name' must be a member name ({MEMBER_RULE})")
        if event_name in events:
            raise Refused(f"event '{event_name}' is declared twice")
        schema = _get(event, "schema")
        events[event_name] = {} if schema is None else schema
    keys = _array(_get(service, "config"))
    config = None if keys is None else [_param(key, "[Config] key") for key in keys]
    return Declaration(name, methods, events, config)


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)
_BOOLEAN = {"true", "false", "yes", "no", "1", "0", "on", "off"}


def config_problem(config, keys):
    """What rpcd says of the handler file's [Config] CONFIG ({key: text}) against the declared KEYS (None: not
    declared), or None when it takes it."""
    if keys is None:
        return None
    for key, text in config.items():
        if not text:
            continue
        declared = next((k for k in keys if k["name"] == key), None)
        if declared is None:
            names = ", ".join(k["name"] for k in keys)
            return f"[Config] {key}= is not a key the program reads (it declares: {names})"
        kind = _get(declared["schema"], "type")
        fits = {"integer": lambda: _INTEGER.fullmatch(text), "number": lambda: _DECIMAL.fullmatch(text),
                "boolean": lambda: text.lower() in _BOOLEAN}.get(kind, lambda: True)()
        if not fits:
            return f"[Config] {key}={text} is not {'an' if kind == 'integer' else 'a'} {kind}"
    for key in keys:
        if key["required"] and key["name"] not in config:
            return f"[Config] needs {key['name']}=, which the program requires"
    return None


_KINDS = {"null": lambda v: v is None, "boolean": lambda v: isinstance(v, bool),
          "number": lambda v: _number(v) is not None, "string": lambda v: isinstance(v, str),
          "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict),
          "integer": lambda v: _number(v) is not None and math.isfinite(v) and float(v).is_integer()}


def _types(schema):
    kind = _get(schema, "type")
    if isinstance(kind, str):
        return [kind]
    return [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []


def _equal(a, b):
    if _number(a) is not None and _number(b) is not None:
        return a == b
    return type(a) is type(b) and a == b


def schema_problem(value, schema):
    """What is wrong with VALUE under the part of SCHEMA rpcd enforces, or None."""
    types = _types(schema)
    if types and not any(_KINDS.get(kind, lambda v: True)(value) for kind in types):
        return f"expected {' or '.join(types)}, got {_kind_phrase(value)}"
    options = _array(_get(schema, "enum"))
    if options is not None and not any(_equal(option, value) for option in options):
        return f"must be one of {options}"
    number = _number(value)
    if number is not None:
        low, high = _number(_get(schema, "minimum")), _number(_get(schema, "maximum"))
        if low is not None and number < low:
            return f"must be at least {low}"
        if high is not None and number > high:
            return f"must be at most {high}"
    return None


def _kind_phrase(value):
    for kind in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _KINDS[kind](value):
            return kind
    return type(value).__name__


def sample(schema):
    """A value that passes the enforced part of SCHEMA (the first enum option that does, else one of its first
    usable type, non-null first, within minimum and maximum), or raises ValueError saying why there is none."""
    options = _array(_get(schema, "enum"))
    if options is not None:
        for option in options:
            if schema_problem(option, schema) is None:
                return option
        raise ValueError("no value of its 'enum' passes its 'type', 'minimum' and 'maximum'")
    low, high = _number(_get(schema, "minimum")), _number(_get(schema, "maximum"))
    types = _types(schema) or ["string"]
    for kind in sorted(types, key=lambda k: k == "null"):
        if kind == "integer":
            candidate = math.ceil(low) if low is not None else min(0, math.floor(high)) if high is not None else 0
        elif kind == "number":
            candidate = low if low is not None else min(0, high) if high is not None else 0
        else:
            candidate = {"null": None, "boolean": False, "string": "check", "array": [], "object": {}}.get(kind, "check")
        if schema_problem(candidate, schema) is None:
            return candidate
    raise ValueError(f"no value passes its schema {schema}")

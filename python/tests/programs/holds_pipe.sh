#!/bin/sh
# Starts a process that inherits its standard output, and exits while that process still holds it open.
read -r start
echo '{"jsonrpc":"2.0","id":0,"result":{"protocol":1,"services":[{"name":"broken","version":"1.0.0","methods":[{"name":"ping","params":[],"readOnly":true,"concurrent":true}]}]}}'
sleep 600 &
while read -r line; do
    case $line in
    *'"method":"rpc.cancel"'*) continue ;;
    esac
    id=${line#'{"jsonrpc":"2.0","id":'}
    echo "{\"jsonrpc\":\"2.0\",\"id\":${id%%,*},\"result\":\"pong\"}"
done

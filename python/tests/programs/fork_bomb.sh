#!/bin/sh
# Each call starts processes in a loop and never waits for them (bounded here at 600, so that a check that
# does not stop it cannot take the machine down).
read -r start
echo '{"jsonrpc":"2.0","id":0,"result":{"protocol":1,"services":[{"name":"broken","version":"1.0.0","methods":[{"name":"ping","params":[],"readOnly":true}]}]}}'
while read -r line; do
    id=${line#'{"jsonrpc":"2.0","id":'}
    id=${id%%,*}
    i=0
    while [ $i -lt 600 ]; do
        sleep 30 >/dev/null 2>&1 &
        i=$((i + 1))
    done
    echo "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":\"pong\"}"
done

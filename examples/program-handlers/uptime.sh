#!/bin/sh
# uptime: a program handler in POSIX shell (docs/HANDLER-PROTOCOL.md): one read-only method, `uptime.seconds`,
# answering how long the machine has been up. rpcd writes its fields in a fixed order, so a shell can read
# the id from the start of a line.
read -r start
echo '{"jsonrpc":"2.0","id":0,"result":{"protocol":1,"services":[{"name":"uptime","version":"1.0.0","summary":"How long this machine has been up.","methods":[{"name":"seconds","summary":"Seconds since boot.","params":[],"result":{"name":"seconds","schema":{"type":"number"}},"readOnly":true}]}]}}'
echo "<6>declared" >&2
while read -r line; do
    id=${line#'{"jsonrpc":"2.0","id":'}
    id=${id%%,*}
    case $line in
    *'"method":"rpc.cancel"'*) continue ;;
    esac
    read -r seconds _ < /proc/uptime
    echo "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":$seconds}"
done

/* ldns (NLnet Labs) for Swift (Sources/RPCWideArea): DNS UPDATE (RFC 2136) signed with TSIG (RFC 8945), and
 * the unicast queries of wide-area browsing. rpcd builds no DNS message by hand: every packet, name and
 * record goes through ldns. The helpers below exist where a macro or a struct by value would import badly.
 */
#ifndef RPCD_CLDNS_SHIM_H
#define RPCD_CLDNS_SHIM_H

#include <ldns/ldns.h>
#include <sys/time.h>

/* ldns_resolver_set_timeout takes a struct timeval by value; milliseconds are what Swift has. */
static inline void rpcd_ldns_resolver_set_timeout_ms(ldns_resolver *resolver, long milliseconds) {
    struct timeval timeout = { .tv_sec = milliseconds / 1000, .tv_usec = (milliseconds % 1000) * 1000 };
    ldns_resolver_set_timeout(resolver, timeout);
}

/* ldns_tcp_send with the timeout in milliseconds: rpcd sends its signed updates itself so that it sees
 * the server's answer even when that answer is unsigned (a refusal for a wrong key, TSIG error BADSIG), which
 * ldns_resolver_send_pkt discards. */
static inline ldns_status rpcd_ldns_tcp_send(uint8_t **result, ldns_buffer *query, const struct sockaddr_storage *to,
                                             socklen_t length, long milliseconds, size_t *answer_size) {
    struct timeval timeout = { .tv_sec = milliseconds / 1000, .tv_usec = (milliseconds % 1000) * 1000 };
    return ldns_tcp_send(result, query, to, length, timeout, answer_size);
}

#endif

/* libavahi-client for Swift (Sources/RPCAvahi).
 *
 * Swift cannot call C's variadic functions, so rpcd only uses the non-variadic forms: the *_strlst
 * variants (avahi_entry_group_add_service_strlst, avahi_entry_group_update_service_txt_strlst) with
 * TXT records built by avahi_string_list_add_arbitrary, never avahi_entry_group_add_service or
 * avahi_string_list_new. The helpers below exist where a macro or an anonymous enum would import badly.
 */
#ifndef RPCD_CAVAHI_SHIM_H
#define RPCD_CAVAHI_SHIM_H

#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#include <avahi-common/timeval.h>

/* Room for any address avahi_address_snprint writes, terminating NUL included. */
static inline size_t rpcd_avahi_address_str_max(void) { return AVAHI_ADDRESS_STR_MAX; }

#endif

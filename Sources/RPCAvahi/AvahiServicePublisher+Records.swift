import CAvahi
import Logging
import RPCDNSSD
import RPCLogging

#if canImport(Glibc)
import Glibc
#endif

/// The records side of `AvahiServicePublisher`: one entry group per service and port, its names, its TXT
/// record. Everything here runs on Avahi's poll thread or with the poll's lock held.
extension AvahiServicePublisher {
    private func interfaceIndices() -> [AvahiIfIndex] {
        guard !configuration.interfaces.isEmpty else { return [AvahiIfIndex(AVAHI_IF_UNSPEC)] }
        var indices: [AvahiIfIndex] = []
        for name in configuration.interfaces {
            let index = if_nametoindex(name)
            if index == 0 {
                logger.warning("Interface not found; not advertising on it", metadata: [LogField.interface: "\(name)"])
            } else {
                indices.append(AvahiIfIndex(index))
            }
        }
        return indices
    }

    /// Adds the record's services to its group (creating the group, choosing the name) and commits.
    func register(_ record: Record) {
        guard let client else { return }
        if record.group == nil {
            record.group = avahi_entry_group_new(client, entryGroupCallback, record.userdata)
            guard record.group != nil else {
                logger.error("Cannot create an Avahi entry group", metadata: [LogField.service: "\(record.advertisement.service)", LogField.error: "\(AvahiError("avahi_entry_group_new", client: client))"])
                return
            }
        }
        let group = record.group!
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        if record.baseName == nil {
            var base = configuration.instanceName.expand(service: record.advertisement.service, host: hostName)
            if record.webPage == nil, configuration.ports.first != record.port {
                // One name per port: DNS-SD would otherwise see two services of the same name.
                let suffix = " (\(record.port))"
                base = DNSSDName.truncated(base, maxBytes: DNSSDName.maxLabelBytes - suffix.utf8.count) + suffix
            }
            record.baseName = base
            record.name = base
        }
        let interfaces = interfaceIndices()
        guard !interfaces.isEmpty else { return }
        // A local collision (another service of this name on this host) is reported at once; try a few
        // alternatives, as the entry group's COLLISION state does for collisions on the network.
        for _ in 0..<16 {
            let status = addServices(record, group: group, interfaces: interfaces)
            if status == Int32(AVAHI_ERR_COLLISION) {
                avahi_entry_group_reset(group)
                rename(record, reason: "local")
                continue
            }
            if status < 0 {
                logger.error(
                    "Cannot advertise service",
                    metadata: [LogField.service: "\(record.advertisement.service)", LogField.instance: "\(record.name ?? "")",
                               LogField.error: "\(AvahiError("adding the DNS-SD service", code: status))"])
                avahi_entry_group_reset(group)
                return
            }
            let committed = avahi_entry_group_commit(group)
            if committed < 0 {
                logger.error("Cannot advertise service", metadata: [LogField.service: "\(record.advertisement.service)", LogField.error: "\(AvahiError("committing the entry group", code: committed))"])
            }
            return
        }
        logger.error("Cannot advertise service: every alternative name is taken", metadata: [LogField.service: "\(record.advertisement.service)"])
    }

    /// The service and its subtype on every interface; the first failing Avahi status, or 0.
    private func addServices(_ record: Record, group: OpaquePointer, interfaces: [AvahiIfIndex]) -> Int32 {
        if let page = record.webPage { return addWebPage(page, record, group: group, interfaces: interfaces) }
        guard let name = record.name, let txt = try? record.advertisement.txtRecord(), let subtype = try? record.advertisement.subtype() else {
            return Int32(AVAHI_ERR_INVALID_SERVICE_NAME)
        }
        let type = RPCAdvertisement.serviceType
        let proto = configuration.ipProtocol.avahi
        return AvahiTXT.with(txt.strings) { list in
            for interface in interfaces {
                let added = avahi_entry_group_add_service_strlst(
                    group, interface, proto, AvahiPublishFlags(0), name, type, nil, nil, UInt16(record.port), list)
                if added < 0 { return added }
                let sub = avahi_entry_group_add_service_subtype(group, interface, proto, AvahiPublishFlags(0), name, type, nil, subtype)
                if sub < 0 { return sub }
            }
            return 0
        }
    }

    /// The web page: its type and `path=` TXT, no subtype.
    private func addWebPage(_ page: RPCWebPageAdvertisement, _ record: Record, group: OpaquePointer, interfaces: [AvahiIfIndex]) -> Int32 {
        guard let name = record.name, let txt = try? page.txtRecord() else { return Int32(AVAHI_ERR_INVALID_SERVICE_NAME) }
        let proto = configuration.ipProtocol.avahi
        return AvahiTXT.with(txt.strings) { list in
            for interface in interfaces {
                let added = avahi_entry_group_add_service_strlst(
                    group, interface, proto, AvahiPublishFlags(0), name, page.serviceType, nil, nil, UInt16(page.port), list)
                if added < 0 { return added }
            }
            return 0
        }
    }

    func updateTXT(_ record: Record) {
        guard let group = record.group, avahi_entry_group_is_empty(group) == 0, let name = record.name,
              let txt = try? record.advertisement.txtRecord()
        else { return }
        let proto = configuration.ipProtocol.avahi
        let status: Int32 = AvahiTXT.with(txt.strings) { list in
            for interface in interfaceIndices() {
                let updated = avahi_entry_group_update_service_txt_strlst(
                    group, interface, proto, AvahiPublishFlags(0), name, RPCAdvertisement.serviceType, nil, list)
                if updated < 0 { return updated }
            }
            return 0
        }
        if status < 0 {
            logger.error("Cannot update TXT record", metadata: [LogField.service: "\(record.advertisement.service)", LogField.error: "\(AvahiError("updating the TXT record", code: status))"])
        } else {
            logger.notice(
                "Advertisement updated",
                metadata: [LogField.service: "\(record.advertisement.service)", LogField.instance: "\(name)",
                           LogField.moduleVersion: "\(record.advertisement.version)", LogField.fingerprint: "\(record.advertisement.fingerprint)"])
        }
    }

    /// Frees the record's group, which withdraws its records from the network.
    func withdraw(_ record: Record) {
        if let group = record.group { avahi_entry_group_free(group) }
        record.group = nil
    }

    /// Switches to Avahi's alternative name ("calc on host #2") and logs both names.
    private func rename(_ record: Record, reason: String) {
        let old = record.name ?? record.baseName ?? record.advertisement.service
        guard let alternative = avahi_alternative_service_name(old) else { return }
        let new = DNSSDName.truncated(String(cString: alternative))
        avahi_free(alternative)
        record.name = new
        logger.warning(
            "Instance name collision; using an alternative name",
            metadata: [LogField.service: "\(record.advertisement.service)", LogField.previousInstance: "\(old)",
                       LogField.instance: "\(new)", LogField.collision: "\(reason)"])
    }

    fileprivate func entryGroupStateChanged(_ record: Record, _ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        guard !stopped else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            logger.notice(
                "Service advertised",
                metadata: [LogField.service: "\(record.advertisement.service)", LogField.instance: "\(record.name ?? "")",
                           LogField.port: "\(record.port)"])
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Someone on the network has this name: take the alternative and register again.
            rename(record, reason: "network")
            avahi_entry_group_reset(group)
            register(record)
        case AVAHI_ENTRY_GROUP_FAILURE:
            logger.error(
                "Advertisement failed",
                metadata: [LogField.service: "\(record.advertisement.service)",
                           LogField.error: "\(AvahiError("entry group", client: avahi_entry_group_get_client(group)))"])
        default:
            break
        }
    }
}

private func entryGroupCallback(_ group: OpaquePointer?, _ state: AvahiEntryGroupState, _ userdata: UnsafeMutableRawPointer?) {
    guard let group, let userdata else { return }
    let record = Unmanaged<AvahiServicePublisher.Record>.fromOpaque(userdata).takeUnretainedValue()
    record.publisher.entryGroupStateChanged(record, group, state)
}

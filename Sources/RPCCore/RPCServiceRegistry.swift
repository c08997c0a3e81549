import JSONRPC
package import RPCBinding
import RPCJSON
package import RPCMetrics
package import RPCProtocol

/// An immutable snapshot of the services being served and the routes to their methods.
///
/// The router holds one registry at a time and swaps it atomically on reload; calls already routed keep the
/// registry they were routed through. Building one validates names; a lookup is one probe of a table built for it (`RouteTable`).
package final class RPCServiceRegistry: Sendable {
    /// Where a full method name leads. A class: a lookup hands out one reference, not a copy of every field
    /// (the descriptor alone holds several), on every call's path.
    package final class Route: Sendable {
        package let serviceName: String
        package let service: any RPCService
        package let methodIndex: Int
        package let method: RPCMethodDescriptor
        /// The method's series (nil: a registry built without metrics), resolved once here so
        /// that a call looks nothing up.
        package let metrics: RPCMethodMetrics?
        /// Who may call the method, under the registry's `access`.
        package let access: RPCAccessPolicy.MethodAccess
        /// How the method answers when it always answers on the spot (`RPCService.answerAtOnce(methodIndex:)`),
        /// asked once here: a call reads it without a copy of the service's method table entry, its generic
        /// metadata or a call through the service's witness table.
        package let atOnce: RPCAtOnceMethod?
        /// `access` lets every peer call the method: checked without copying the rule out of the route.
        package let allowsAnyPeer: Bool

        init(
            serviceName: String, service: any RPCService, methodIndex: Int, method: RPCMethodDescriptor,
            metrics: RPCMethodMetrics?, access: RPCAccessPolicy.MethodAccess
        ) {
            self.atOnce = service.answerAtOnce(methodIndex: methodIndex)
            self.allowsAnyPeer = access.allowsAnyPeer
            self.serviceName = serviceName
            self.service = service
            self.methodIndex = methodIndex
            self.method = method
            self.metrics = metrics
            self.access = access
        }
    }

    /// Where a full event name (`kv.changed`) leads.
    package struct EventRoute: Sendable {
        package let serviceName: String
        package let event: RPCEventDescriptor
    }

    /// Services sorted by name.
    package let services: [any RPCService]
    /// Services that are configured but not running (a plugin module failed to load): calls to them get
    /// "Service unavailable" rather than "Method not found", which tells the caller the right story.
    package let unavailableServices: Set<String>
    /// Why each of those whose handler was refused was (by service): an administrator's call gets the reason.
    package let refusals: [String: RPCHandlerRefusal]
    /// Who may call what; swapped together with the services.
    package let access: RPCAccessPolicy
    private let routes: RouteTable<Route>
    /// Every event of every service, by full name.
    package let events: [String: EventRoute]
    /// Where calls to no declared method and messages that are no call are counted (nil: not counted).
    package let metrics: RPCMetrics?

    /// Fails when two services share a name, a service name is empty or contains a dot, or a service
    /// declares a method or an event twice. With `metrics`, each method's series are made (or found, when an
    /// earlier registry made them) here.
    package init(
        services: [any RPCService], unavailable: Set<String> = [], refusals: [RPCHandlerRefusal] = [],
        access: RPCAccessPolicy = .unrestricted, metrics: RPCMetrics? = nil
    ) throws(RPCRegistryError) {
        var routes: [String: Route] = [:]
        var events: [String: EventRoute] = [:]
        var names = Set<String>()
        for service in services {
            let descriptor = service.descriptor
            guard !descriptor.name.isEmpty, !descriptor.name.contains(".") else {
                throw RPCRegistryError("service name '\(descriptor.name)' must be non-empty and contain no dot")
            }
            guard names.insert(descriptor.name).inserted else {
                throw RPCRegistryError("service '\(descriptor.name)' is registered twice")
            }
            for (index, method) in descriptor.methods.enumerated() {
                let fullName = descriptor.name + "." + method.name
                guard routes[fullName] == nil else {
                    throw RPCRegistryError("method '\(fullName)' is declared twice")
                }
                routes[fullName] = Route(
                    serviceName: descriptor.name, service: service, methodIndex: index, method: method,
                    metrics: metrics?.method(
                        service: descriptor.name, method: method.name, documentedCodes: Set(method.errors.map(\.code))),
                    access: access.access(service: descriptor.name, method: method))
            }
            for event in descriptor.events {
                let fullName = descriptor.name + "." + event.name
                guard events[fullName] == nil else {
                    throw RPCRegistryError("event '\(fullName)' is declared twice")
                }
                events[fullName] = EventRoute(serviceName: descriptor.name, event: event)
            }
        }
        self.services = services.sorted { $0.descriptor.name < $1.descriptor.name }
        let unavailableServices = unavailable.subtracting(names)
        self.unavailableServices = unavailableServices
        self.refusals = Dictionary(
            refusals.filter { unavailableServices.contains($0.service) }.map { ($0.service, $0) }, uniquingKeysWith: { first, _ in first })
        self.access = access
        self.routes = RouteTable(routes)
        self.events = events
        self.metrics = metrics
    }

    package func route(for method: String) -> Route? {
        routes[method]
    }

    /// The error for a method that has no route. An administrator calling a refused handler's service learns
    /// why it was refused; anyone else only that the service is unavailable (the reason names files and paths).
    package func missingRouteError(for method: String, administrator: Bool = false) -> RPCError {
        if !unavailableServices.isEmpty, let dot = method.firstIndex(of: "."),
           unavailableServices.contains(String(method[..<dot])) {
            let service = String(method[..<dot])
            if administrator, let refusal = refusals[service] {
                return .serviceUnavailable(service, refusedHandler: refusal.handler, detail: refusal.description)
            }
            return .serviceUnavailable(service)
        }
        return .methodNotFound(method)
    }

    package func service(named name: String) -> (any RPCService)? {
        services.first { $0.descriptor.name == name }
    }
}

/// A set of services that cannot be served together; the message names the conflict.
package struct RPCRegistryError: Error, Hashable, Sendable, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}

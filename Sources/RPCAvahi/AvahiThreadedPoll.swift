import CAvahi

/// Avahi's threaded event loop: one thread of its own that runs every Avahi callback.
///
/// Avahi objects are not thread-safe. Code on the poll's thread (inside callbacks) may use them directly;
/// any other thread must hold the poll's lock (`withLock`) while it does. The lock is held only for the
/// duration of a few D-Bus calls, and is never taken on an event loop: callers are Swift tasks or
/// dedicated threads. `stop()` must not be called from the poll's own thread.
final class AvahiThreadedPoll: @unchecked Sendable {
    let pointer: OpaquePointer
    private var running = false

    init() throws(AvahiError) {
        guard let pointer = avahi_threaded_poll_new() else {
            throw AvahiError("creating Avahi's event loop", code: Int32(AVAHI_ERR_NO_MEMORY))
        }
        self.pointer = pointer
    }

    /// The `AvahiPoll` vtable `avahi_client_new` wants.
    var api: UnsafePointer<AvahiPoll> { avahi_threaded_poll_get(pointer) }

    /// Starts the poll's thread.
    func start() throws(AvahiError) {
        let status = avahi_threaded_poll_start(pointer)
        guard status >= 0 else { throw AvahiError("starting Avahi's event loop thread", code: Int32(AVAHI_ERR_FAILURE)) }
        running = true
    }

    /// Runs `body` with the poll's lock held (never call it from an Avahi callback: that thread holds it).
    /// Works before `start()` too, so setup and early calls are serialised the same way.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        avahi_threaded_poll_lock(pointer)
        defer { avahi_threaded_poll_unlock(pointer) }
        return try body()
    }

    /// Stops the thread (waiting for it to exit). Idempotent.
    func stop() {
        guard running else { return }
        running = false
        avahi_threaded_poll_stop(pointer)
    }

    deinit {
        stop()
        avahi_threaded_poll_free(pointer)
    }
}

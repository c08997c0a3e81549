/// The journal `MESSAGE_ID`s of rpcd's lifecycle entries (sd-id128 values, made once with
/// `systemd-id128 new`). Each is explained in `systemd/rpcd.catalog`, which `journalctl -x` shows
/// next to the entry, and listed in docs/LOGGING.md. Log them under `LogField.messageID`.
/// Never change an id: administrators filter on them (`journalctl MESSAGE_ID=...`).
package enum LogMessageID {
    /// rpcd is ready: every listener bound, every enabled handler loaded.
    package static let started = "aad5022865d24348ac0a29890bd17352"
    /// A reload finished and the new configuration serves.
    package static let reloaded = "9220cd891469400890406a1980afcd0e"
    /// A reload was refused; the previous configuration keeps serving.
    package static let reloadFailed = "dff5cd795bb542a5a189f7b1c663a776"
    /// A handler's module was loaded and initialised.
    package static let moduleLoaded = "4c38daf213f14af39a57e55b1018a0e6"
    /// A handler was refused: bad file, missing or incompatible module, failed init.
    package static let moduleRefused = "0ba294729fe04cb4a2e0ee907c542c26"
    /// Graceful shutdown started.
    package static let stopping = "522642a65a4d4f47a058c329cbc31d39"
    /// Start-up failed; the daemon exits.
    package static let startFailed = "b4f6c3b52f7042dcadf704f2b91efe23"
}

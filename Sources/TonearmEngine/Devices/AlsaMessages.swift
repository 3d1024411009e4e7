import Foundation

/// What ALSA said first on the current thread since `clear()`, kept by the C error handler
/// (`tonearm_alsa_keep_message` in the CALSA shim). Per thread, in the thread's dictionary: the
/// output thread and the opener thread each read their own. Only errors write it, so the
/// audio path pays nothing while all goes well.
enum AlsaMessages {
    private static let key = "tonearm.alsa.message"

    static func clear() {
        Thread.current.threadDictionary.removeObject(forKey: key)
    }

    /// The last message kept on this thread, cleared as it is read.
    static func take() -> String? {
        let dictionary = Thread.current.threadDictionary
        let message = dictionary[key] as? String
        dictionary.removeObject(forKey: key)
        return message
    }

    fileprivate static func keep(_ message: String) {
        // The first complaint names the cause; later ones are its consequences.
        let dictionary = Thread.current.threadDictionary
        if dictionary[key] == nil { dictionary[key] = message }
    }
}

/// Called by the C error handler with ALSA's formatted message.
@_cdecl("tonearm_alsa_message_kept")
func tonearmAlsaMessageKept(_ message: UnsafePointer<CChar>) {
    AlsaMessages.keep(String(cString: message))
}

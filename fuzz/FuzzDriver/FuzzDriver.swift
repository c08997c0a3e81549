/// libFuzzer's own entry for programs that bring their `main` (compiler-rt's FuzzerInterface.h).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32
) -> Int32

/// Runs libFuzzer on `testOneInput` with this process's arguments and returns its exit status.
///
/// Why not libFuzzer's `main` alone: SwiftPM links a debug executable with `main` aliased to the module's entry
/// point (so tests can import executables), which leaves libFuzzer's `main` out. Each harness therefore has a
/// `main.swift` that calls this, and libFuzzer parses the command line as usual (`-max_total_time=`, corpus
/// directories, a crash file to reproduce).
package func runFuzzer(_ testOneInput: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32) -> Int32 {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
}

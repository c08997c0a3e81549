// The floor of a module host's idle memory (bench/bench.py, isolation): a Swift program that loads the runtime,
// says it is ready and waits, doing nothing else. Whatever RSS it has, every Swift process has.
import Glibc

_ = write(1, "ready\n", 6)
pause()

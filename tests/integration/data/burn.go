// A Go program that profiles itself with runtime/pprof (a pprof file written by Go's own
// writer, for test_import.sh): burns at least 200 ms of CPU in main.burn.
package main

import (
	"os"
	"runtime/pprof"
	"syscall"
	"time"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano())
}

//go:noinline
func burn() int {
	x := 0
	deadline := time.Now().Add(10 * time.Second)
	for cpuTime() < 200*time.Millisecond && time.Now().Before(deadline) {
		for i := 0; i < 100000; i++ {
			x += i * i
		}
	}
	return x
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	pprof.StartCPUProfile(f)
	burn()
	pprof.StopCPUProfile()
	f.Close()
}

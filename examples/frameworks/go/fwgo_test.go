package fwgo

// Four tests with known, clearly different costs (1:2:3:4, about 1.5 s of CPU in all).
// Go names a test after its function: ciprof should report "TestTiny", "TestSmall",
// "TestMedium" and "TestLarge". With FWGO_PARALLEL=1 every test calls t.Parallel(), so
// `-test.parallel 2` runs two at once. Each test appends "NAME SECONDS" (its thread's CPU
// time) to $CIPROF_TRUTH.

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID).
func threadCPU(t *testing.T) float64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		t.Fatalf("clock_gettime: %v", errno)
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// record appends "NAME SECONDS" to $CIPROF_TRUTH with one write on an O_APPEND file.
func record(t *testing.T, seconds float64) {
	path := os.Getenv("CIPROF_TRUTH")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(fmt.Sprintf("%s %.6f\n", t.Name(), seconds)); err != nil {
		t.Fatal(err)
	}
}

// run burns units of work as the current test. The goroutine keeps its OS thread for the
// whole test so the thread's CPU time is the test's.
func run(t *testing.T, units int) {
	if os.Getenv("FWGO_PARALLEL") == "1" {
		t.Parallel()
	}
	runtime.LockOSThread()
	t0 := threadCPU(t)
	h := Burn(units)
	record(t, threadCPU(t)-t0)
	if h == 0 {
		t.Fatal("no work done")
	}
}

func TestTiny(t *testing.T)   { run(t, 15) }
func TestSmall(t *testing.T)  { run(t, 30) }
func TestMedium(t *testing.T) { run(t, 45) }
func TestLarge(t *testing.T)  { run(t, 60) }

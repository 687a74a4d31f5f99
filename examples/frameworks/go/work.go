// Package fwgo is the Go example for ciprof: known work (Burn: about 10 ms of CPU per
// unit) whose tests, in fwgo_test.go, have clearly different costs.
package fwgo

// itersPerUnit is the number of Mix steps in one unit of work.
const itersPerUnit = 2800000

// Mix is one step of a 64-bit mixer (splitmix64's finaliser).
//
//go:noinline
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Burn does units of work and returns a value depending on all of it.
//
//go:noinline
func Burn(units int) uint64 {
	h := uint64(units)
	for i := 0; i < units*itersPerUnit; i++ {
		h = Mix(h + uint64(i))
	}
	return h
}

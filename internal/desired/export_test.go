package desired

// SlowMachineConfig turns the MachineConfig fast path (mcfast.go) off
// until restore is called: for the benchmark that compares the two.
func SlowMachineConfig() (restore func()) {
	fastMachineConfig = false
	return func() { fastMachineConfig = true }
}

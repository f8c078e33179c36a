package fsx

// SetRenameat2 replaces renameat2 until the returned function is called.
func SetRenameat2(f func(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error) func() {
	old := renameat2
	renameat2 = f
	return func() { renameat2 = old }
}

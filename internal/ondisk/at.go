package ondisk

import "golang.org/x/sys/unix"

// Lstatat stats name in the directory dfd without following a link,
// retrying an interrupted call: for the readers that walk a tree from a
// directory descriptor of this root (package image).
func Lstatat(dfd int, name string, st *unix.Stat_t) error { return fstatat(dfd, name, st) }

// Readlinkat reads the link name in the directory dfd, whatever its length.
func Readlinkat(dfd int, name string) (string, error) { return readlinkat(dfd, name) }

package sample

type Kind string

const (
	A Kind = "a"
	B Kind = "b"
	// An untyped one, a number, an iota and a computed one.
	Name  = "name"
	Size  = 4096
	Other = Size - 1
)

const (
	X = iota
	Y
)

type Level int

// A typed iota is a number too.
const (
	Low Level = iota
	High
)

package model

import "strings"

// SplitKernelArguments splits a kernel command line (/proc/cmdline, a boot
// entry's options, a MachineConfig's kernelArguments entry) into arguments as
// the kernel's next_arg (lib/cmdline.c) does: on white space (its isspace)
// outside double quotes, which are kept, as in /proc/cmdline and Ignition's
// kernelArguments. Bytes are kept as they are, valid UTF-8 or not.
func SplitKernelArguments(s string) []string {
	var args []string
	start, quoted := -1, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !quoted && strings.IndexByte(" \t\n\v\f\r", c) >= 0 {
			if start >= 0 {
				args = append(args, s[start:i])
				start = -1
			}
			continue
		}
		if c == '"' {
			quoted = !quoted
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		args = append(args, s[start:])
	}
	return args
}

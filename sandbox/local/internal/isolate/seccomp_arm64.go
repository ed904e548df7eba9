//go:build linux

package isolate

// auditArch is AUDIT_ARCH_AARCH64.
const auditArch = 0xc00000b7

// modeRules are the calls that can set a setuid or setgid bit.
var modeRules = []syscallRule{
	{nr: 52, modeArg: 1, flagsArg: -1},  // fchmod
	{nr: 53, modeArg: 2, flagsArg: -1},  // fchmodat
	{nr: 452, modeArg: 2, flagsArg: -1}, // fchmodat2
	{nr: 33, modeArg: 2, flagsArg: -1},  // mknodat
	{nr: 56, modeArg: 3, flagsArg: 2},   // openat
}

// noSyscalls fail with ENOSYS: openat2, io_uring_setup, io_uring_enter,
// io_uring_register.
var noSyscalls = []uint32{437, 425, 426, 427}

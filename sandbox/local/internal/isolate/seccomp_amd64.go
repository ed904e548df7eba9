//go:build linux

package isolate

// auditArch is AUDIT_ARCH_X86_64.
const auditArch = 0xc000003e

// modeRules are the calls that can set a setuid or setgid bit.
var modeRules = []syscallRule{
	{nr: 90, modeArg: 1, flagsArg: -1},  // chmod
	{nr: 91, modeArg: 1, flagsArg: -1},  // fchmod
	{nr: 268, modeArg: 2, flagsArg: -1}, // fchmodat
	{nr: 452, modeArg: 2, flagsArg: -1}, // fchmodat2
	{nr: 85, modeArg: 1, flagsArg: -1},  // creat
	{nr: 133, modeArg: 1, flagsArg: -1}, // mknod
	{nr: 259, modeArg: 2, flagsArg: -1}, // mknodat
	{nr: 2, modeArg: 2, flagsArg: 1},    // open
	{nr: 257, modeArg: 3, flagsArg: 2},  // openat
}

// noSyscalls fail with ENOSYS: openat2, io_uring_setup, io_uring_enter,
// io_uring_register.
var noSyscalls = []uint32{437, 425, 426, 427}

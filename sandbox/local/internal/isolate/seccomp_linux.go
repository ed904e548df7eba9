package isolate

import (
	"encoding/binary"
	"sync"
)

// A file that a command makes setuid or setgid inside its sandbox would be
// setuid or setgid on the host too, owned by the user running the server.
// The seccomp filter refuses (EPERM) every call that would set those bits:
// chmod, fchmod, fchmodat, fchmodat2 with S_ISUID or S_ISGID in the mode,
// and open, openat, creat, mknod, mknodat creating a file with them.
// openat2, whose mode sits in a structure the filter cannot read, and
// io_uring, which bypasses seccomp, fail with ENOSYS, as on a kernel that
// lacks them; programs fall back to openat and plain system calls.

// Classic BPF, as seccomp takes it.
type sockFilter struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

const (
	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJsetK  = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K

	retAllow = 0x7fff0000
	retErrno = 0x00050000
	eperm    = 1
	enosys   = 38

	offNr   = 0
	offArch = 4
	offArgs = 16

	x32Bit    = 0x40000000
	setidBits = 0o6000     // S_ISUID | S_ISGID
	oCreat    = 0o100      // O_CREAT
	oTmpfile  = 0o20000000 // __O_TMPFILE
)

// syscallRule says where a system call keeps its mode, and its flags when
// the mode matters only for a file it creates (flagsArg < 0: always).
type syscallRule struct {
	nr       uint32
	modeArg  int
	flagsArg int
}

// seccompFilter returns the filter as bwrap reads it, or an allow-all
// filter on an architecture it does not know.
var seccompFilter = sync.OnceValue(func() []byte {
	var prog []sockFilter
	if auditArch == 0 {
		prog = []sockFilter{{code: bpfRetK, k: retAllow}}
	} else {
		prog = buildFilter()
	}
	out := make([]byte, 0, 8*len(prog))
	for _, f := range prog {
		out = binary.NativeEndian.AppendUint16(out, f.code)
		out = append(out, f.jt, f.jf)
		out = binary.NativeEndian.AppendUint32(out, f.k)
	}
	return out
})

// buildFilter assembles the program. Jumps are relative, so each rule is
// a block that falls through to the next when the call is not its own.
func buildFilter() []sockFilter {
	deny := func(errno uint32) sockFilter { return sockFilter{code: bpfRetK, k: retErrno | errno} }
	allow := sockFilter{code: bpfRetK, k: retAllow}
	prog := []sockFilter{
		{code: bpfLdWAbs, k: offArch},
		{code: bpfJeqK, k: auditArch, jt: 1},
		deny(enosys), // another ABI (x32, say)
		{code: bpfLdWAbs, k: offNr},
		{code: bpfJsetK, k: x32Bit, jf: 1},
		deny(enosys), // the x32 ABI, which shares the architecture
	}
	for _, nr := range noSyscalls {
		prog = append(prog, sockFilter{code: bpfJeqK, k: nr, jf: 1}, deny(enosys))
	}
	for _, r := range modeRules {
		// Little-endian: the low word of argument i is at offArgs+8*i.
		block := []sockFilter{}
		if r.flagsArg >= 0 {
			block = append(block,
				sockFilter{code: bpfLdWAbs, k: uint32(offArgs + 8*r.flagsArg)},
				sockFilter{code: bpfJsetK, k: oCreat | oTmpfile, jf: 3})
		}
		block = append(block,
			sockFilter{code: bpfLdWAbs, k: uint32(offArgs + 8*r.modeArg)},
			sockFilter{code: bpfJsetK, k: setidBits, jf: 1},
			deny(eperm),
			allow)
		prog = append(prog, sockFilter{code: bpfJeqK, k: r.nr, jf: uint8(len(block))})
		prog = append(prog, block...)
	}
	return append(prog, allow)
}

package proc

import "syscall"

// setDeathSignal kills the command when this process dies, so a crash never
// leaves it running (Go sets it after the credential change, which would
// otherwise clear it).
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

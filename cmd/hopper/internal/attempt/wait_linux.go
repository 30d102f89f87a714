package attempt

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// watch returns a channel closed when cmd's process has exited, and the
// function that then reaps it. The process is not reaped before reap is
// called: while it is a zombie its pid, which is also its process group's
// id, cannot be reused, so killing the group in between cannot hit another
// process.
func watch(cmd *exec.Cmd) (exited <-chan struct{}, reap func() error) {
	done := make(chan struct{})
	pid := cmd.Process.Pid
	go func() {
		defer close(done)
		const (
			pPID    = 1          // P_PID
			wNoWait = 0x01000000 // WNOWAIT
		)
		var info [128]byte // siginfo_t
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
				uintptr(unsafe.Pointer(&info)), syscall.WEXITED|wNoWait, 0, 0)
			if errno != syscall.EINTR {
				return
			}
		}
	}()
	return done, cmd.Wait
}

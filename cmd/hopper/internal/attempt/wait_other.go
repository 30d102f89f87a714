//go:build !linux

package attempt

import "os/exec"

// watch returns a channel closed when cmd's process has exited and been
// reaped, and the function that returns how it ended.
func watch(cmd *exec.Cmd) (exited <-chan struct{}, reap func() error) {
	done := make(chan struct{})
	var err error
	go func() {
		err = cmd.Wait()
		close(done)
	}()
	return done, func() error { <-done; return err }
}

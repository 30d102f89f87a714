package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// Pause freezes the server's process (docker pause): connections stay open and
// connecting still succeeds, but nothing is answered until [Server.Unpause].
func (s *Server) Pause(ctx context.Context) error {
	if _, err := s.docker.ContainerPause(ctx, s.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("redistest: pause: %w", err)
	}
	return nil
}

// Unpause resumes a server frozen by [Server.Pause]; requests sent meanwhile
// are answered then.
func (s *Server) Unpause(ctx context.Context) error {
	if _, err := s.docker.ContainerUnpause(ctx, s.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("redistest: unpause: %w", err)
	}
	return nil
}

// Restart stops the server (SIGTERM) and starts it again (docker restart), and
// returns once it answers PING. Every connection is dropped, and all data is
// lost: the server persists nothing.
//
// Docker may publish a restarted container on another host port. Start pins
// the port, so [Server.Addr] normally stays the same and clients reconnect by
// themselves; Restart re-reads the mapped port all the same, and should it
// have changed, Addr returns the new one and clients made before must be
// replaced. [MinimalUser] is created again if it existed.
func (s *Server) Restart(ctx context.Context) error {
	if _, err := s.docker.ContainerRestart(ctx, s.ctr.GetContainerID(), client.ContainerRestartOptions{}); err != nil {
		return fmt.Errorf("redistest: restart: %w", err)
	}
	if err := s.readAddr(ctx); err != nil {
		return err
	}
	if err := waitPing(ctx, s.Addr()); err != nil {
		return fmt.Errorf("redistest: restart: %w", err)
	}
	s.mu.Lock()
	recreate := s.aclReady
	s.aclReady = false
	s.mu.Unlock()
	if recreate {
		if err := s.ensureMinimalUser(ctx); err != nil {
			return fmt.Errorf("redistest: restart: %w", err)
		}
	}
	return nil
}

// waitPing polls addr with PING, as the default user, until it answers PONG.
func waitPing(ctx context.Context, addr string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ping(ctx, addr)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not answering PING: %w (last: %v)", addr, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

func ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// refusingProxy stands for a proxy or a compatible server that does not
// know some commands (twemproxy and WATCH, say): a command refuse matches is
// answered "-ERR unknown command" by the proxy itself, the rest go to Redis
// and come back in order, one reply per command.
type refusingProxy struct {
	*tcpProxy
	hangUp  bool // refuse by closing the connection, as twemproxy does
	mu      sync.Mutex
	refused []string // the names of the commands refused, in order
}

func newRefusingProxy(t testing.TB, target string, refuse func(cmd []string) bool) *refusingProxy {
	t.Helper()
	p := &refusingProxy{}
	p.tcpProxy = newTCPProxy(t, target, func(down, up net.Conn) {
		go p.serveConn(down, up, refuse)
	})
	return p
}

func (p *refusingProxy) serveConn(down, up net.Conn, refuse func(cmd []string) bool) {
	defer down.Close()
	defer up.Close()
	in, fromUp := bufio.NewReader(down), bufio.NewReader(up)
	for {
		cmd, raw, err := readCommand(in)
		if err != nil {
			return
		}
		if refuse(cmd) {
			p.mu.Lock()
			p.refused = append(p.refused, strings.ToUpper(cmd[0]))
			p.mu.Unlock()
			if p.hangUp {
				return
			}
			if _, err := fmt.Fprintf(down, "-ERR unknown command '%s', with args beginning with: \r\n", cmd[0]); err != nil {
				return
			}
			continue
		}
		if _, err := up.Write(raw); err != nil {
			return
		}
		reply, err := readReply(fromUp, nil)
		if err != nil {
			return
		}
		if _, err := down.Write(reply); err != nil {
			return
		}
	}
}

func (p *refusingProxy) refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// readCommand reads one command as clients send it, an array of bulk
// strings, and returns its words and its bytes.
func readCommand(r *bufio.Reader) (words []string, raw []byte, err error) {
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "*") {
		return nil, nil, fmt.Errorf("not a command: %q %v", head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 1 {
		return nil, nil, fmt.Errorf("bad command length %q", head)
	}
	raw = []byte(head)
	for range n {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "$") {
			return nil, nil, fmt.Errorf("not a bulk string: %q %v", line, err)
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil || size < 0 {
			return nil, nil, fmt.Errorf("bad bulk length %q", line)
		}
		word := make([]byte, size+2)
		if _, err := io.ReadFull(r, word); err != nil {
			return nil, nil, err
		}
		raw = append(append(raw, line...), word...)
		words = append(words, string(word[:size]))
	}
	return words, raw, nil
}

// readReply appends one whole RESP2 or RESP3 reply from r to buf.
func readReply(r *bufio.Reader, buf []byte) ([]byte, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return nil, fmt.Errorf("reply line %q: %v", line, err)
	}
	buf = append(buf, line...)
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	elems := 0
	switch line[0] {
	case '$', '=', '!': // bulk string, verbatim string, bulk error
		if n < 0 {
			return buf, nil
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, err
		}
		return append(buf, data...), nil
	case '*', '~', '>': // array, set, push
		elems = n
	case '%': // map
		elems = 2 * n
	case '|': // attribute, then the reply it describes
		elems = 2*n + 1
	}
	for range max(elems, 0) {
		if buf, err = readReply(r, buf); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

package bench

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// cmdStat is one line of INFO commandstats: calls and total microseconds.
type cmdStat struct {
	Calls int64
	Usec  int64
}

// parseCommandStats reads INFO commandstats:
//
//	cmdstat_xadd:calls=3,usec=25,usec_per_call=8.33,rejected_calls=0,failed_calls=0
//
// into a map keyed by the command's name as Redis spells it ("xadd",
// "xinfo|stream").
func parseCommandStats(info string) (map[string]cmdStat, error) {
	out := map[string]cmdStat{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name, ok = strings.CutPrefix(name, "cmdstat_")
		if !ok {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			var err error
			switch k {
			case "calls":
				st.Calls, err = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.Usec, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("commandstats line %q: %v", line, err)
			}
		}
		out[name] = st
	}
	return out, sc.Err()
}

// parseInfoFields reads the "key:value" lines of any INFO section.
func parseInfoFields(info string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// serverCPU returns used_cpu_sys + used_cpu_user of INFO cpu, in seconds.
func serverCPU(ctx context.Context, c rueidis.Client) (float64, error) {
	info, err := c.Do(ctx, c.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return 0, err
	}
	f := parseInfoFields(info)
	sys, err1 := strconv.ParseFloat(f["used_cpu_sys"], 64)
	user, err2 := strconv.ParseFloat(f["used_cpu_user"], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("INFO cpu: used_cpu_sys %q, used_cpu_user %q", f["used_cpu_sys"], f["used_cpu_user"])
	}
	return sys + user, nil
}

func commandStats(ctx context.Context, c rueidis.Client) (map[string]cmdStat, error) {
	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return nil, err
	}
	return parseCommandStats(info)
}

// harnessCommands are the harness's own commands (and a client's connection
// handshake), never counted as a transition's server time.
var harnessCommands = map[string]bool{
	"info": true, "config|resetstat": true, "config|get": true, "flushall": true, "script|load": true,
	"ping": true, "hello": true, "client|setinfo": true, "client|setname": true, "client|tracking": true,
	"select": true, "auth": true, "command|docs": true, "command": true,
}

// commandClass says where a command counted by commandstats ran: at top
// level (its usec is server time of its own), nested inside EXEC or EVALSHA
// (whose usec already includes it: commandstats counts it twice), or the
// harness's own.
type commandClass int

const (
	topLevel commandClass = iota
	nested
	harness
)

func (c commandClass) String() string {
	return [...]string{"top", "nested", "harness"}[c]
}

// classifier tells top-level from nested commands for one side. It is
// learned from what the side's client actually sent (see roundtrip_test.go):
// a name sent only between MULTI and EXEC is nested; a name the client never
// sent is, on the script side, one of the script's own calls (nested in
// EVALSHA), and on our side a top-level command of a path the learning run
// did not take (an UNWATCH after an error, say).
type classifier struct {
	sentTop, sentNested map[string]bool
	unseenNested        bool
}

func (cl classifier) class(name string) commandClass {
	switch {
	case harnessCommands[name] || strings.HasPrefix(name, "client|"):
		return harness
	case cl.sentTop[name]:
		return topLevel
	case cl.sentNested[name]:
		return nested
	case cl.unseenNested:
		return nested
	}
	return topLevel
}

// ambiguous lists names sent both at top level and inside MULTI: their
// nested calls are counted twice.
func (cl classifier) ambiguous() []string {
	var out []string
	for n := range cl.sentNested {
		if cl.sentTop[n] {
			out = append(out, n)
		}
	}
	return out
}

// serverUsec sums the usec of the top-level commands: the server's time
// spent executing them, EXEC and EVALSHA with everything they ran.
func (cl classifier) serverUsec(stats map[string]cmdStat) int64 {
	var sum int64
	for name, st := range stats {
		if cl.class(name) == topLevel {
			sum += st.Usec
		}
	}
	return sum
}

// commandName is a command's name as commandstats spells it: lower case,
// "container|sub" for commands with subcommands.
func commandName(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	name := strings.ToLower(tokens[0])
	if containerCommands[name] && len(tokens) > 1 {
		name += "|" + strings.ToLower(tokens[1])
	}
	return name
}

var containerCommands = map[string]bool{
	"xinfo": true, "xgroup": true, "config": true, "client": true, "script": true, "command": true,
	"object": true, "function": true, "acl": true, "memory": true, "cluster": true, "latency": true,
	"module": true, "pubsub": true, "slowlog": true,
}

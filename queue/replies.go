package queue

import (
	"fmt"

	"github.com/hopper-queue/hopper/fence"
	"github.com/redis/rueidis"
)

// The readers of the replies that several transitions read: HMGET fields,
// XPENDING rows, optional strings, stream entries.

// fieldValues reads an HMGET reply of n fields.
func fieldValues(r rueidis.RedisResult, n int, what string) ([]rueidis.RedisMessage, error) {
	vals, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	if len(vals) != n {
		return nil, fmt.Errorf("queue: %s returned %d values for %d fields", what, len(vals), n)
	}
	return vals, nil
}

// optionalField reads one value of an HMGET reply, nil for a missing field.
func optionalField(m rueidis.RedisMessage) (string, bool, error) {
	if m.IsNil() {
		return "", false, nil
	}
	s, err := m.ToString()
	return s, err == nil, err
}

// pendingRows parses an extended XPENDING reply: [id, consumer, idle, count]...
func pendingRows(r rueidis.RedisResult) ([]fence.Row, error) {
	msgs, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	rows := make([]fence.Row, 0, len(msgs))
	for _, m := range msgs {
		row, err := parsePendingRow(m)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// pendingRow parses an extended XPENDING reply of COUNT 1, every fenced
// transition's: its row, if any, without a slice of rows.
func pendingRow(r rueidis.RedisResult) (fence.Row, bool, error) {
	msgs, err := r.ToArray()
	if err != nil || len(msgs) == 0 {
		return fence.Row{}, false, err
	}
	row, err := parsePendingRow(msgs[0])
	return row, err == nil, err
}

func parsePendingRow(m rueidis.RedisMessage) (fence.Row, error) {
	f, err := m.ToArray()
	if err != nil || len(f) != 4 {
		return fence.Row{}, fmt.Errorf("unexpected XPENDING row %v", m)
	}
	var row fence.Row
	var e1, e2, e3, e4 error
	row.EntryID, e1 = f[0].ToString()
	row.Consumer, e2 = f[1].ToString()
	row.IdleMS, e3 = f[2].AsInt64()
	row.DeliveryCount, e4 = f[3].AsInt64()
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil {
		return fence.Row{}, fmt.Errorf("unexpected XPENDING row %v", m)
	}
	return row, nil
}

// optionalString reads a bulk string reply that may be nil.
func optionalString(r rueidis.RedisResult) (string, bool, error) {
	s, err := r.ToString()
	if rueidis.IsRedisNil(err) {
		return "", false, nil
	}
	return s, err == nil, err
}

// hmgetStates reads HMGET unit_state's reply for units: a missing state is
// left out.
func hmgetStates(units []string, r rueidis.RedisResult) (map[string]string, error) {
	vals, err := fieldValues(r, len(units), "HMGET unit_state")
	if err != nil {
		return nil, err
	}
	states := make(map[string]string, len(units))
	for i, v := range vals {
		if s, err := v.ToString(); err == nil {
			states[units[i]] = s
		}
	}
	return states, nil
}

// entryFields is a unit entry as XRANGE returns it.
type entryFields struct {
	exists, hasID, hasType bool
	id, typ                string
}

func parseEntry(r rueidis.RedisResult) entryFields {
	entries, err := r.AsXRange()
	if err != nil || len(entries) == 0 {
		return entryFields{}
	}
	f := entryFields{exists: true}
	f.id, f.hasID = entries[0].FieldValues["id"]
	f.typ, f.hasType = entries[0].FieldValues["type"]
	return f
}

func optionalStringOK(r rueidis.RedisResult) (string, bool) {
	s, ok, err := optionalString(r)
	return s, ok && err == nil
}

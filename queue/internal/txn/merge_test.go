package txn

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"github.com/stretchr/testify/assert"
	"go.uber.org/mock/gomock"
)

func TestMergeWrites(t *testing.T) {
	b := mock.NewClient(gomock.NewController(t)).B()
	cases := []struct {
		name     string
		in, want []string
	}{{
		name: "HSET of one hash: its fields joined",
		in:   []string{"HSET {b}:workers w1 r1", "HSET {b}:workers w2 r2 w3 r3"},
		want: []string{"HSET {b}:workers w1 r1 w2 r2 w3 r3"},
	}, {
		name: "XACK of one stream and group: its ids joined; other groups apart",
		in:   []string{"XACK {b}:s g 1-1", "XACK {b}:s h 9-9", "XACK {b}:s g 2-1 3-1"},
		want: []string{"XACK {b}:s h 9-9", "XACK {b}:s g 1-1 2-1 3-1"},
	}, {
		name: "HINCRBY of one field: the sum",
		in:   []string{"HINCRBY {b}:meta done 1", "HINCRBY {b}:meta failed 1", "HINCRBY {b}:meta done 2"},
		want: []string{"HINCRBY {b}:meta failed 1", "HINCRBY {b}:meta done 3"},
	}, {
		name: "DEL: one, at the place of the last, after the SETs before it",
		in:   []string{"SET {b}:e1 t1", "DEL {b}:e1", "SET {b}:e2 t2", "DEL {b}:e2 {b}:e3"},
		want: []string{"SET {b}:e1 t1", "SET {b}:e2 t2", "DEL {b}:e1 {b}:e2 {b}:e3"},
	}, {
		name: "others untouched, in order, between the merged ones",
		in: []string{"HSET {b}:workers w1 r1", "PEXPIRE {b}:g 10", "XADD {b}:log * a b", "HSET {b}:workers w2 r2",
			"HINCRBY {b}:meta n x", "HINCRBY {b}:meta n x", "HSET {b}:odd f"},
		want: []string{"PEXPIRE {b}:g 10", "XADD {b}:log * a b", "HSET {b}:workers w1 r1 w2 r2",
			"HINCRBY {b}:meta n x", "HINCRBY {b}:meta n x", "HSET {b}:odd f"},
	}, {
		name: "nothing to merge: the same",
		in:   []string{"HSET {b}:workers w1 r1", "XACK {b}:s g 1-1", "DEL {b}:e1"},
		want: []string{"HSET {b}:workers w1 r1", "XACK {b}:s g 1-1", "DEL {b}:e1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in rueidis.Commands
			for _, c := range tc.in {
				w := strings.Fields(c)
				in = append(in, b.Arbitrary(w[0]).Keys(w[1]).Args(w[2:]...).Build())
			}
			var got []string
			for _, c := range MergeWrites(b, in) {
				got = append(got, strings.Join(c.Commands(), " "))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

package queue

import "context"

// ReadAttemptsAfter is ReadAttempts from just after entry id after ("": from
// the first): a follower of the log (hopper status, hopper events --follow)
// keeps the id of the last entry it read and reads, each look, only what
// was logged since. Unlike ReadAttempts it bounds no page: ctx is the
// follower's, which decides how long to wait through an outage.
func (b *Build) ReadAttemptsAfter(ctx context.Context, after string, each func(id, event string, ok bool) error) error {
	return b.scanAfter(ctx, b.keys.Attempts, after, 0, func(id string, fields map[string]string) error {
		ev, ok := fields["json"]
		return each(id, ev, ok)
	})
}

package attempt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopper-queue/hopper/queue"
	"github.com/hopper-queue/hopper/testresults"
	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// batch runs script over units as a batch ({units} after the script), in
// a folder of its own, where each run appends its arguments to runs.log.
func batch(t *testing.T, script string, units ...string) ([]worker.Result, []string) {
	t.Helper()
	dir := t.TempDir()
	c := &Command{Args: []string{"sh", "-c", `echo "$*" >> runs.log; ` + script, "sh", UnitsPlaceholder},
		BuildID: "b1", WorkerID: "w1", Slot: 1, Dir: dir}
	rs := make([]queue.Reservation, len(units))
	for i, u := range units {
		rs[i] = reservation(u)
	}
	res := c.BatchFunc()(context.Background(), rs)
	require.Len(t, res, len(units))
	raw, err := os.ReadFile(filepath.Join(dir, "runs.log"))
	require.NoError(t, err)
	return res, strings.Split(strings.TrimSpace(string(raw)), "\n")
}

func outcomes(res []worker.Result) []worker.Outcome {
	var out []worker.Outcome
	for _, r := range res {
		out = append(out, r.Outcome)
	}
	return out
}

// go test -json: each package's final event gives its unit's outcome and
// duration, its own output, and the failed tests; one command for all.
func TestBatchGoTestJSON(t *testing.T) {
	script := `cat <<'END'
{"Action":"start","Package":"example.com/m/a"}
{"Action":"output","Package":"example.com/m/a","Output":"ok  \texample.com/m/a\t0.5s\n"}
{"Action":"pass","Package":"example.com/m/a","Elapsed":0.5}
{"Action":"run","Package":"example.com/m/b","Test":"TestB"}
{"Action":"output","Package":"example.com/m/b","Test":"TestB","Output":"b_test.go:9: want 2\n"}
{"Action":"fail","Package":"example.com/m/b","Test":"TestB","Elapsed":0.1}
{"Action":"fail","Package":"example.com/m/b","Elapsed":1.25}
{"Action":"skip","Package":"example.com/m/c","Elapsed":0}
END
exit 1`
	res, runs := batch(t, script, "./a", "./b", "./c")
	assert.Equal(t, []string{"./a ./b ./c"}, runs, "one command for the batch")
	assert.Equal(t, []worker.Outcome{worker.Passed, worker.Failed, worker.Passed}, outcomes(res))
	assert.Equal(t, 500, int(res[0].Duration.Milliseconds()))
	assert.Equal(t, 1250, int(res[1].Duration.Milliseconds()))
	require.Len(t, res[1].Errors, 1)
	assert.Equal(t, "TestB", res[1].Errors[0].ExampleID)
	assert.Contains(t, res[1].Errors[0].Message, "b_test.go:9: want 2")
	assert.Equal(t, "ok  \texample.com/m/a\t0.5s\n", string(res[0].Output), "a unit's own output")
	assert.NotContains(t, string(res[0].Output), "want 2")
	assert.Empty(t, res[0].Tests, "a package without tests gives no case")
	require.Len(t, res[1].Tests, 1, "a member keeps its own tests")
	assert.Equal(t, "TestB", res[1].Tests[0].Name)
	assert.Equal(t, testresults.Failed, res[1].Tests[0].Status)
}

// A JUnit file at $HOPPER_JUNIT: testcases' file (or classname)
// attributes name the units.
func TestBatchJUnit(t *testing.T) {
	script := `cat > "$HOPPER_JUNIT" <<'END'
<?xml version="1.0"?>
<testsuites><testsuite name="rspec">
<testcase name="a works" classname="spec.a_spec" file="./spec/a_spec.rb" time="0.75"/>
<testcase name="b works" classname="spec.b_spec" file="./spec/b_spec.rb" time="0.5"><failure message="expected 1, got 2"/></testcase>
<testcase name="c works" classname="spec.c_spec" time="0.25"/>
</testsuite></testsuites>
END
exit 1`
	res, runs := batch(t, script, "spec/a_spec.rb", "spec/b_spec.rb", "spec/c_spec.rb")
	assert.Equal(t, []string{"spec/a_spec.rb spec/b_spec.rb spec/c_spec.rb"}, runs)
	assert.Equal(t, []worker.Outcome{worker.Passed, worker.Failed, worker.Passed}, outcomes(res))
	assert.Equal(t, 750, int(res[0].Duration.Milliseconds()))
	require.Len(t, res[1].Errors, 1)
	assert.Equal(t, "expected 1, got 2", res[1].Errors[0].Message)
	for i, name := range []string{"a works", "b works", "c works"} {
		require.Len(t, res[i].Tests, 1, "unit %d keeps its own tests", i)
		assert.Equal(t, name, res[i].Tests[0].Name)
	}
}

// A member run again alone keeps the tests of that run.
func TestBatchUnitAloneKeepsItsTests(t *testing.T) {
	script := `[ $# -gt 1 ] && exit 1
echo "{\"Action\":\"pass\",\"Package\":\"$1\",\"Test\":\"Test_$1\"}"
echo "{\"Action\":\"pass\",\"Package\":\"$1\"}"`
	res, runs := batch(t, script, "a", "b")
	assert.Equal(t, []string{"a b", "a", "b"}, runs)
	for i, u := range []string{"a", "b"} {
		assert.Equal(t, worker.Passed, res[i].Outcome)
		require.Len(t, res[i].Tests, 1, "unit %s", u)
		assert.Equal(t, "Test_"+u, res[i].Tests[0].Name)
	}
}

// A JUnit file that does not parse fails every unit's attempt, saying so,
// within the retry budget: nothing passes by it.
func TestBatchJUnitThatDoesNotParse(t *testing.T) {
	res, _ := batch(t, `echo '<testsuites><testcase' > "$HOPPER_JUNIT"`, "a", "b")
	for i, r := range res {
		assert.Equal(t, worker.Failed, r.Outcome, "unit %d", i)
		assert.False(t, r.NoRequeue, "unit %d: the retry budget decides", i)
		require.Len(t, r.Errors, 1)
		assert.Equal(t, "unreadable report", r.Errors[0].Class)
		assert.Contains(t, r.Errors[0].Message, "the JUnit file at $HOPPER_JUNIT does not parse")
	}
}

// A command that reports nothing per unit: exit 0 passes the batch; a
// failed batch is split, each unit run again alone, so that only the
// failing one fails.
func TestBatchSplitOnFailure(t *testing.T) {
	res, runs := batch(t, `exit 0`, "a", "b")
	assert.Equal(t, []worker.Outcome{worker.Passed, worker.Passed}, outcomes(res))
	assert.Equal(t, []string{"a b"}, runs)

	res, runs = batch(t, `for u; do [ "$u" = bad ] && { echo "$u failed"; exit 1; }; done; exit 0`, "a", "bad", "c")
	assert.Equal(t, []worker.Outcome{worker.Passed, worker.Failed, worker.Passed}, outcomes(res))
	assert.Equal(t, []string{"a bad c", "a", "bad", "c"}, runs, "the batch, then each unit alone")
	require.Len(t, res[1].Errors, 1)
	assert.Equal(t, "bad failed", res[1].Errors[0].Message)
}

// Units the report does not name never pass by omission: they run alone.
func TestBatchUnreportedUnitRunsAlone(t *testing.T) {
	script := `[ $# -gt 1 ] && echo '{"Action":"pass","Package":"a","Elapsed":0.1}'; exit 0`
	res, runs := batch(t, script, "a", "b")
	assert.Equal(t, []worker.Outcome{worker.Passed, worker.Passed}, outcomes(res))
	assert.Equal(t, []string{"a b", "b"}, runs)
}

func TestBatchArgvAndEnvironment(t *testing.T) {
	c := &Command{Args: []string{"run", "-x", UnitsPlaceholder, "--end"}}
	assert.Equal(t, []string{"run", "-x", "a", "b c", "--end"}, c.BatchArgv([]string{"a", "b c"}))
	res, _ := batch(t, `printf '%s|' "$HOPPER_UNITS" "$HOPPER_JUNIT"`, "a", "b")
	out := string(res[0].Output)
	assert.Contains(t, out, "a\nb|")
	assert.Regexp(t, `hopper-junit-[0-9]+/junit\.xml\|`, out)
}

package configerr

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"
)

// yamlLine is the "line N: " go-yaml puts before a syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line [0-9]+: `)

// yamlSyntaxError says where the YAML syntax error of raw is, for a config
// error's file:line:column. go-yaml (gopkg.in/yaml.v3, which Butane
// decodes with: butane/config/util/util.go) names the line of the
// construct the error is in when it has one (parser.context_mark, where a
// block sequence or mapping starts), not the line of the error
// (problem_mark), which it does not give out. The line is found by
// parsing whole-line prefixes of raw: the shortest that fails with the
// same problem ends on the line that has it (a prefix cut before it parses,
// or fails otherwise: an unclosed flow or quote). The column is that line's
// first non-blank. ok is false when raw parses, or the search finds no
// such prefix: the caller keeps go-yaml's own message.
func yamlSyntaxError(raw []byte) (line, column int, problem string, ok bool) {
	problem, failed := yamlProblem(raw)
	if !failed {
		return 0, 0, "", false
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	same := func(k int) bool {
		p, failed := yamlProblem(bytes.Join(lines[:k], nil))
		return failed && p == problem
	}
	k := 1 + sort.Search(len(lines), func(i int) bool { return same(i + 1) })
	if k > len(lines) {
		return 0, 0, "", false
	}
	l := lines[k-1]
	column = 1 + len(l) - len(bytes.TrimLeft(l, " \t"))
	return k, column, problem, true
}

// yamlProblem is go-yaml's error for raw without its line; failed is false
// when raw parses.
func yamlProblem(raw []byte) (problem string, failed bool) {
	var n yaml.Node
	err := yaml.Unmarshal(raw, &n)
	if err == nil {
		return "", false
	}
	return yamlLine.ReplaceAllString(err.Error(), "yaml: "), true
}

// yamlTypeLine is the line go-yaml names in an unmarshal error: the line of
// the value of the wrong type, which it has right.
var yamlTypeLine = regexp.MustCompile(`(?m)^  line ([0-9]+): (.*)$`)

// YAMLPosition gives le, the error of a YAML file that does not decode, the
// line and column of the problem: of a syntax error as yamlSyntaxError
// finds it, of a value of the wrong type as go-yaml says it (the first, when
// it lists several).
func YAMLPosition(le *LoadError, raw []byte) {
	if line, col, problem, ok := yamlSyntaxError(raw); ok {
		le.Line, le.Column, le.Err = line, col, fmt.Errorf("invalid YAML: %s", problem)
		return
	}
	m := yamlTypeLine.FindStringSubmatch(le.Err.Error())
	if m == nil {
		return
	}
	line, err := strconv.Atoi(m[1])
	lines := bytes.SplitAfter(raw, []byte("\n"))
	if err != nil || line < 1 || line > len(lines) {
		return
	}
	l := lines[line-1]
	le.Line, le.Column = line, 1+len(l)-len(bytes.TrimLeft(l, " \t"))
	if len(yamlTypeLine.FindAllString(le.Err.Error(), 2)) == 1 {
		le.Err = fmt.Errorf("invalid YAML: %s", m[2])
	}
}

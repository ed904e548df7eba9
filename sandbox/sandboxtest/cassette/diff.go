package cassette

import "strings"

// maxDiffLines bounds the diff work: beyond it the texts are compared as
// whole blocks.
const maxDiffLines = 2000

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// lcs returns the longest-common-subsequence table of a and b.
func lcs(a, b []string) [][]int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t
}

// diffCost is the number of lines that differ between a and b.
func diffCost(a, b string) int {
	la, lb := splitLines(a), splitLines(b)
	if len(la) > maxDiffLines || len(lb) > maxDiffLines {
		if a == b {
			return 0
		}
		return len(la) + len(lb)
	}
	return len(la) + len(lb) - 2*lcs(la, lb)[0][0]
}

// lineDiff shows how b differs from a: unchanged lines start with two
// spaces, lines only in a with "- ", lines only in b with "+ ".
func lineDiff(a, b string) string {
	la, lb := splitLines(a), splitLines(b)
	var out strings.Builder
	if len(la) > maxDiffLines || len(lb) > maxDiffLines {
		for _, l := range la {
			out.WriteString("- " + l + "\n")
		}
		for _, l := range lb {
			out.WriteString("+ " + l + "\n")
		}
		return out.String()
	}
	t := lcs(la, lb)
	i, j := 0, 0
	for i < len(la) || j < len(lb) {
		switch {
		case i < len(la) && j < len(lb) && la[i] == lb[j]:
			out.WriteString("  " + la[i] + "\n")
			i++
			j++
		case i < len(la) && (j == len(lb) || t[i+1][j] >= t[i][j+1]):
			out.WriteString("- " + la[i] + "\n")
			i++
		default:
			out.WriteString("+ " + lb[j] + "\n")
			j++
		}
	}
	return out.String()
}

package analysis

import (
	"slices"
	"testing"
)

// TestFitLast: a last cell too long for the width breaks after its commas
// onto rows of its own; cells that fit, and a lone item longer than the
// room, stay whole.
func TestFitLast(t *testing.T) {
	rows := [][]string{
		{"variant", "flags"},
		{"naive", "a,bb,ccc"},
		{"fair", "ok"},
		{"x", "toolongtobreak"},
	}
	// "variant" is 7 wide, padded by 2: 9 used; width 16 leaves 5.
	got := fitLast(rows, 16)
	want := [][]string{
		{"variant", "flags"},
		{"naive", "a,bb,"},
		{"", "ccc"},
		{"fair", "ok"},
		{"x", "toolongtobreak"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("fitLast:\n got %q\nwant %q", got, want)
	}
	if got := fitLast(rows, 200); !slices.EqualFunc(got, rows, slices.Equal) {
		t.Errorf("rows within the width changed: %q", got)
	}
}

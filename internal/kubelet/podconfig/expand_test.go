package podconfig

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b-$(A)", "EMPTY": "", "X Y": "space"}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)", "xaya"},
		{"$(B)", "b-$(A)"}, // values are not expanded again
		{"$(MISSING)", "$(MISSING)"},
		{"$(EMPTY)|", "|"},
		{"$$(A)", "$(A)"}, // escaped
		{"$$$(A)", "$a"},
		{"$$$$", "$$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"${A}", "${A}"},
		{"$(A", "$(A"},
		{"$(", "$("},
		{"$()", "$()"},
		{"$(X Y)", "space"},
		{"$(A)$(", "a$("},
		// The name runs to the first ")": "($(A" is unknown and stays.
		{"$(($(A))", "$(($(A))"},
		{"ü$(A)ü", "üaü"},
	} {
		if got := Expand(tc.in, lookupIn(vars)); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

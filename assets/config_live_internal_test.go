package assets

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEveryConfigSettingIsLiveOrNeedsARestart: each key config.yaml takes
// is in ConfigSettings once, so a running engine applies its change or
// says that it needs a restart; none is ignored.
func TestEveryConfigSettingIsLiveOrNeedsARestart(t *testing.T) {
	t.Parallel()
	var keys []string
	for _, top := range configKeys[""] {
		sub, ok := configKeys[top]
		if !ok || top == "fs_profiles" || top == "providers" {
			keys = append(keys, top)
			continue
		}
		for _, k := range sub {
			keys = append(keys, top+"."+k)
		}
	}
	var listed []string
	for _, s := range ConfigSettings() {
		listed = append(listed, s.Path)
	}
	slices.Sort(keys)
	slices.Sort(listed)
	assert.Equal(t, keys, listed)
}

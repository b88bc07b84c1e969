package native

// view is a delta group's membership as its watch learned it, with the
// members each notification touched, so that a report names only what
// changed (recipes.ChangeWatcher).
type view struct {
	in map[string]bool
	// before holds, for each member touched since the last report,
	// whether it was in the view then.
	before map[string]bool
}

func newView() *view { return &view{in: map[string]bool{}, before: map[string]bool{}} }

// list replaces the view with members and reports them whole.
func (v *view) list(members []string, listed func([]string)) {
	clear(v.in)
	clear(v.before)
	for _, m := range members {
		v.in[m] = true
	}
	listed(members)
}

// set records that member is in (or out of) the group.
func (v *view) set(member string, in bool) {
	if _, ok := v.before[member]; !ok {
		v.before[member] = v.in[member]
	}
	if in {
		v.in[member] = true
	} else {
		delete(v.in, member)
	}
}

// report calls changed with the members that joined and left since the
// last report, if any did.
func (v *view) report(changed func(joined, left []string)) {
	var joined, left []string
	for m, was := range v.before {
		switch is := v.in[m]; {
		case is && !was:
			joined = append(joined, m)
		case was && !is:
			left = append(left, m)
		}
	}
	clear(v.before)
	if len(joined)+len(left) > 0 {
		changed(joined, left)
	}
}

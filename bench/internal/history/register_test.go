package history

import "testing"

func TestStep(t *testing.T) {
	s := regState{"a", 10}
	tests := []struct {
		name string
		in   regInput
		out  regOutput
		ok   bool
		next regState
	}{
		{"get current", regInput{Kind: Get}, regOutput{Value: "a", RV: 10}, true, s},
		{"get other value", regInput{Kind: Get}, regOutput{Value: "b", RV: 10}, false, s},
		{"list item older", regInput{Kind: List}, regOutput{Value: "a", RV: 9}, false, s},
		{"write", regInput{Kind: Write, Value: "b"}, regOutput{RV: 11}, true, regState{"b", 11}},
		{"write rv not forward", regInput{Kind: Write, Value: "b"}, regOutput{RV: 10}, false, s},
		{"cas on its rv", regInput{CAS, "b", 10}, regOutput{RV: 12}, true, regState{"b", 12}},
		{"cas on another rv", regInput{CAS, "b", 9}, regOutput{RV: 12}, false, s},
		{"conflict on another rv", regInput{CAS, "b", 9}, regOutput{Conflict: true}, true, s},
		{"conflict on its rv", regInput{CAS, "b", 10}, regOutput{Conflict: true}, false, s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, next := step(s, tt.in, tt.out)
			if ok != tt.ok || ok && next != tt.next {
				t.Errorf("step = %v, %v; want %v, %v", ok, next, tt.ok, tt.next)
			}
		})
	}
}

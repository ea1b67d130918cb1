package sysinfo

import (
	"reflect"
	"testing"
)

func TestParseNumactlHardware(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    NumactlHardware
		wantErr bool
	}{
		{name: "1 node (this VM)", in: `available: 1 nodes (0)
node 0 cpus: 0 1
node 0 size: 24105 MB
node 0 free: 23181 MB
node distances:
node   0 
  0:  10 
`, want: NumactlHardware{Nodes: 1, Distances: [][]int{{10}}}},
		{name: "2 nodes", in: `available: 2 nodes (0-1)
node 0 cpus: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
node 0 size: 257673 MB
node 0 free: 254001 MB
node 1 cpus: 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127
node 1 size: 258041 MB
node 1 free: 255310 MB
node distances:
node   0   1 
  0:  10  21 
  1:  21  10 
`, want: NumactlHardware{Nodes: 2, Distances: [][]int{{10, 21}, {21, 10}}}},
		{name: "no NUMA", in: "No NUMA available on this system\n", wantErr: true},
		{name: "bad distance", in: "available: 1 nodes (0)\nnode distances:\nnode 0\n  0:  ten\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNumactlHardware(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseNumactlHardware error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseNumactlHardware = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNUMACtlCrossCheck(t *testing.T) {
	sysfs := NUMACtl{Nodes: 2, NodeDistances: [][]int{{10, 21}, {21, 10}}}
	c := sysfs
	c.CrossCheck(NumactlHardware{Nodes: 2, Distances: [][]int{{10, 21}, {21, 10}}})
	if !c.Available || c.Warning != "" {
		t.Errorf("agreeing CrossCheck = %+v, want available and no warning", c)
	}
	c = sysfs
	c.CrossCheck(NumactlHardware{Nodes: 1, Distances: [][]int{{10}}})
	if want := "numactl reports 1 nodes, sysfs 2; numactl distances [[10]] differ from sysfs [[10 21] [21 10]]"; c.Warning != want {
		t.Errorf("disagreeing CrossCheck warning = %q, want %q", c.Warning, want)
	}
	// Without sysfs distances, numactl's fill the matrix.
	c = NUMACtl{Nodes: 1, NodeDistances: [][]int{}}
	c.CrossCheck(NumactlHardware{Nodes: 1, Distances: [][]int{{10}}})
	if !reflect.DeepEqual(c.NodeDistances, [][]int{{10}}) || c.Warning != "" {
		t.Errorf("CrossCheck without sysfs distances = %+v, want [[10]] and no warning", c)
	}
}

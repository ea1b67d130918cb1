package ec2sim

import (
	"encoding/xml"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// placementGroup is a placement group of the region, by name.
type placementGroup struct {
	id, name, strategy string
	tags               map[string]string
}

// placementStrategies are the strategies CreatePlacementGroup takes.
var placementStrategies = []string{"cluster", "spread", "partition"}

// PlacementGroups maps each placement group's name to its strategy.
func (s *Server) PlacementGroups() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for n, g := range s.placementGroups {
		out[n] = g.strategy
	}
	return out
}

func (s *Server) createPlacementGroup(f url.Values, reqID string) (any, *apiError) {
	name, strategy := f.Get("GroupName"), f.Get("Strategy")
	if name == "" {
		return nil, errf(400, "MissingParameter", "The request must contain the parameter GroupName")
	}
	if strategy == "" {
		strategy = "cluster"
	}
	if !slices.Contains(placementStrategies, strategy) {
		return nil, errf(400, "InvalidParameterValue", "Value (%s) for parameter strategy is invalid. Valid values are: %s", strategy, strings.Join(placementStrategies, ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.placementGroups[name]; ok {
		return nil, errf(400, "InvalidPlacementGroup.Duplicate", "The placement group '%s' already exists.", name)
	}
	if dryRun(f) {
		return nil, errDryRun()
	}
	g := &placementGroup{id: s.newIDLocked("pg", 0x0b10000000000000), name: name, strategy: strategy, tags: specTags(f, "placement-group")}
	s.placementGroups[name] = g
	return createPlacementGroupResponse{Xmlns: xmlns, RequestID: reqID, Group: s.xPlacementGroup(g)}, nil
}

// placementGroupLocked returns the group name, or EC2's error for an
// unknown one.
func (s *Server) placementGroupLocked(name string) (*placementGroup, *apiError) {
	g, ok := s.placementGroups[name]
	if !ok {
		return nil, errf(400, "InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", name)
	}
	return g, nil
}

// inPlacementGroup reports whether in holds a place in its placement
// group: every state but stopped and terminated does.
func inPlacementGroup(in *instance) bool {
	return in.placementGroup != "" && in.state != Terminated && in.state != Stopped
}

func (s *Server) deletePlacementGroup(f url.Values, reqID string) (any, *apiError) {
	name := f.Get("GroupName")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.placementGroupLocked(name); err != nil {
		return nil, err
	}
	// As on EC2, a group with an instance that has not finished
	// terminating cannot be deleted yet.
	for _, in := range s.instances {
		if inPlacementGroup(in) && in.placementGroup == name {
			return nil, errf(400, "InvalidPlacementGroup.InUse", "The placement group '%s' is in use and may not be deleted.", name)
		}
	}
	if dryRun(f) {
		return nil, errDryRun()
	}
	delete(s.placementGroups, name)
	return returned("DeletePlacementGroup", reqID), nil
}

// describePlacementGroups answers DescribePlacementGroups by GroupName.N
// and the filters group-name, strategy, state and tag:KEY; an unknown name
// is EC2's InvalidPlacementGroup.Unknown.
func (s *Server) describePlacementGroups(f url.Values, reqID string) (any, *apiError) {
	names := list(f, "GroupName")
	fs := filters(f)
	for _, fl := range fs {
		switch {
		case fl.name == "group-name", fl.name == "strategy", fl.name == "state", strings.HasPrefix(fl.name, "tag:"):
		default:
			return nil, errf(400, "InvalidParameterValue", "The filter '%s' is invalid", fl.name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if _, err := s.placementGroupLocked(n); err != nil {
			return nil, err
		}
	}
	resp := describePlacementGroupsResponse{Xmlns: xmlns, RequestID: reqID}
	for _, n := range slices.Sorted(maps.Keys(s.placementGroups)) {
		g := s.placementGroups[n]
		if len(names) > 0 && !slices.Contains(names, n) {
			continue
		}
		ok := true
		for _, fl := range fs {
			if strings.HasPrefix(fl.name, "tag:") {
				ok = ok && tagFilterMatches(fl, g.tags)
				continue
			}
			v := map[string]string{"group-name": g.name, "strategy": g.strategy, "state": "available"}[fl.name]
			ok = ok && matchAny(fl.values, v)
		}
		if ok {
			resp.Groups = append(resp.Groups, s.xPlacementGroup(g))
		}
	}
	return resp, nil
}

// checkPlacementGroupLocked refuses a launch into an unknown placement
// group, and into a cluster group whose instances are in another zone: a
// cluster group lives in one availability zone.
func (s *Server) checkPlacementGroupLocked(r *launchRequest) *apiError {
	if r.placementGroup == "" {
		return nil
	}
	g, err := s.placementGroupLocked(r.placementGroup)
	if err != nil {
		return err
	}
	if g.strategy != "cluster" {
		return nil
	}
	for _, in := range s.instances {
		if inPlacementGroup(in) && in.placementGroup == g.name && in.zone != r.zone {
			return errf(400, "InvalidPlacementGroup.InUse", "The placement group '%s' is in use in another availability zone: %s", g.name, in.zone)
		}
	}
	return nil
}

func (s *Server) xPlacementGroup(g *placementGroup) xPlacementGroup {
	return xPlacementGroup{GroupName: g.name, State: "available", Strategy: g.strategy, GroupID: g.id,
		GroupArn: "arn:aws:ec2:" + s.opts.Region + ":" + s.opts.OwnerID + ":placement-group/" + g.name, TagSet: xtags(g.tags)}
}

type xPlacementGroup struct {
	GroupName string `xml:"groupName"`
	State     string `xml:"state"`
	Strategy  string `xml:"strategy"`
	GroupID   string `xml:"groupId"`
	GroupArn  string `xml:"groupArn"`
	TagSet    []xTag `xml:"tagSet>item"`
}

type createPlacementGroupResponse struct {
	XMLName   xml.Name        `xml:"CreatePlacementGroupResponse"`
	Xmlns     string          `xml:"xmlns,attr"`
	RequestID string          `xml:"requestId"`
	Group     xPlacementGroup `xml:"placementGroup"`
}

type describePlacementGroupsResponse struct {
	XMLName   xml.Name          `xml:"DescribePlacementGroupsResponse"`
	Xmlns     string            `xml:"xmlns,attr"`
	RequestID string            `xml:"requestId"`
	Groups    []xPlacementGroup `xml:"placementGroupSet>item"`
}

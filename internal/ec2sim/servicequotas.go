package ec2sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2quota"
)

// The server also answers Service Quotas' GetServiceQuota at the same
// URL, for EC2's On-Demand vCPU quotas, with the values the launches are
// held to. Service Quotas speaks AWS's JSON 1.1 protocol: a POST whose
// X-Amz-Target names the operation, a JSON body, and errors as
// {"__type": code, "message": text}. Requests signed for the
// "servicequotas" service (or unsigned ones with its target prefix) are
// Service Quotas'.

const (
	sqTargetPrefix = "ServiceQuotasV20190624."
	sqContentType  = "application/x-amz-json-1.1"
	ec2ServiceName = "Amazon Elastic Compute Cloud (Amazon EC2)"
)

// isServiceQuotas reports whether a request is for Service Quotas: signed
// for it, or unsigned and naming one of its operations.
func isServiceQuotas(sc sigV4Scope, signed bool, r *http.Request) bool {
	if signed {
		return sc.service == "servicequotas"
	}
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), sqTargetPrefix)
}

// sqOperation is the Service Quotas operation a request names.
func sqOperation(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("X-Amz-Target"), sqTargetPrefix)
}

// serveServiceQuotas checks and answers a Service Quotas request.
func (s *Server) serveServiceQuotas(w http.ResponseWriter, r *http.Request, reqID string, sc sigV4Scope, signed bool) {
	w.Header().Set("X-Amzn-Requestid", reqID)
	op := sqOperation(r)
	switch {
	case !signed:
		s.writeJSONError(w, errf(400, "MissingAuthenticationTokenException", "Missing Authentication Token"))
		return
	case sc.region != s.opts.Region || s.badSessionToken(sc.accessKeyID, r.Header.Get("X-Amz-Security-Token")):
		s.writeJSONError(w, errf(400, "UnrecognizedClientException", "The security token included in the request is invalid."))
		return
	case op != "GetServiceQuota":
		s.writeJSONError(w, errf(400, "UnknownOperationException", ""))
		return
	}
	var req struct{ ServiceCode, QuotaCode string }
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.writeJSONError(w, errf(400, "SerializationException", "Start of structure or map found where not expected."))
		return
	}
	s.mu.Lock()
	denied := s.deniedLocked(op)
	s.mu.Unlock()
	if denied {
		s.writeJSONError(w, errf(400, "AccessDeniedException", "User: arn:aws:iam::%s:user/pgbench is not authorized to perform: "+
			"servicequotas:%s on resource: arn:aws:servicequotas:%s:%s:%s/%s because no identity-based policy allows the servicequotas:%s action",
			s.opts.OwnerID, op, s.opts.Region, s.opts.OwnerID, req.ServiceCode, req.QuotaCode, op))
		return
	}
	resp, aerr := s.getServiceQuota(req.ServiceCode, req.QuotaCode)
	if aerr != nil {
		s.writeJSONError(w, aerr)
		return
	}
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", sqContentType)
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// sqQuota is a ServiceQuota as GetServiceQuota returns it.
type sqQuota struct {
	ServiceCode         string        `json:"ServiceCode"`
	ServiceName         string        `json:"ServiceName"`
	QuotaArn            string        `json:"QuotaArn"`
	QuotaCode           string        `json:"QuotaCode"`
	QuotaName           string        `json:"QuotaName"`
	Value               float64       `json:"Value"`
	Unit                string        `json:"Unit"`
	Adjustable          bool          `json:"Adjustable"`
	GlobalQuota         bool          `json:"GlobalQuota"`
	UsageMetric         sqUsageMetric `json:"UsageMetric"`
	QuotaAppliedAtLevel string        `json:"QuotaAppliedAtLevel"`
}

// sqUsageMetric is the CloudWatch metric of a quota's usage.
type sqUsageMetric struct {
	MetricNamespace               string            `json:"MetricNamespace"`
	MetricName                    string            `json:"MetricName"`
	MetricDimensions              map[string]string `json:"MetricDimensions"`
	MetricStatisticRecommendation string            `json:"MetricStatisticRecommendation"`
}

// getServiceQuota is GetServiceQuota for EC2's On-Demand vCPU quotas.
func (s *Server) getServiceQuota(service, code string) (any, *apiError) {
	if service != ec2quota.ServiceCode {
		return nil, errf(400, "NoSuchResourceException", "The request failed because the specified service does not exist.")
	}
	q, ok := ec2quota.ByCode(code)
	if !ok {
		return nil, errf(400, "NoSuchResourceException", "The request failed because the specified quota and service do not exist.")
	}
	// The usage metric's class is the quota's first word: Standard, G, P.
	class := strings.Fields(strings.TrimPrefix(q.Name, "Running On-Demand "))[0]
	out := sqQuota{
		ServiceCode: service, ServiceName: ec2ServiceName,
		QuotaArn:  fmt.Sprintf("arn:aws:servicequotas:%s:%s:%s/%s", s.opts.Region, s.opts.OwnerID, service, code),
		QuotaCode: code, QuotaName: q.Name, Value: float64(s.quotaValue(code)), Unit: "None", Adjustable: true,
		UsageMetric: sqUsageMetric{MetricNamespace: "AWS/Usage", MetricName: "ResourceCount",
			MetricDimensions: map[string]string{"Class": class + "/OnDemand", "Resource": "vCPU",
				"Service": "EC2", "Type": "Resource"},
			MetricStatisticRecommendation: "Maximum"},
		QuotaAppliedAtLevel: "ACCOUNT",
	}
	return map[string]sqQuota{"Quota": out}, nil
}

// writeJSONError sends an error in the JSON protocols' shape.
func (s *Server) writeJSONError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", sqContentType)
	w.Header().Set("X-Amzn-Errortype", e.code)
	w.WriteHeader(e.status)
	b, _ := json.Marshal(map[string]string{"__type": e.code, "message": e.message})
	w.Write(b)
}

package ui

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/registration"
)

// Services page bounds.
const (
	// maxDroppedListed bounds the dropped entries the services page
	// names; it counts them all.
	maxDroppedListed = 100
	// servicesTimeout bounds reading the registration stream for one
	// request.
	servicesTimeout = 10 * time.Second
)

// serviceEndpoint is one registered endpoint of a service.
type serviceEndpoint struct {
	Host     string `json:"host"`
	Protocol string `json:"protocol"`
	Address  string `json:"address"`
	Port     int    `json:"port,omitempty"`
	// Endpoint is the address and port as one would dial them.
	Endpoint string `json:"endpoint"`
	Priority int    `json:"priority"`
	TTL      string `json:"ttl,omitempty"`
	// Published is when the entry was last published, AgeSeconds how
	// long ago that was.
	Published   time.Time         `json:"published"`
	AgeSeconds  int64             `json:"age_seconds"`
	Signer      string            `json:"signer"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// serviceGroup is one service of a cluster and its endpoints.
type serviceGroup struct {
	Service   string            `json:"service"`
	Endpoints []serviceEndpoint `json:"endpoints"`
}

// serviceCluster is one cluster's services.
type serviceCluster struct {
	Cluster  string         `json:"cluster"`
	Services []serviceGroup `json:"services"`
}

// servicesData is the services page: the registration stream's trusted
// entries that pass the filters, by cluster and service, and the entries
// dropped as untrusted.
type servicesData struct {
	Stream string `json:"stream"`
	// StreamExists is false when the broker has no registration stream
	// (nothing was ever registered there).
	StreamExists bool   `json:"stream_exists"`
	Cluster      string `json:"cluster,omitempty"`
	Service      string `json:"service,omitempty"`
	Protocol     string `json:"protocol,omitempty"`
	FilterError  string `json:"filter_error,omitempty"`
	// Services and Endpoints count the services and endpoints listed.
	Services  int              `json:"services"`
	Endpoints int              `json:"endpoints"`
	Clusters  []serviceCluster `json:"clusters"`
	// Dropped counts the entries dropped as untrusted (unsigned, signed by
	// a key other than the one their subject names, malformed);
	// DroppedEntries names the first maxDroppedListed of them.
	Dropped        int                    `json:"dropped"`
	DroppedEntries []registration.Skipped `json:"dropped_entries"`
}

type servicesView struct {
	layout
	servicesData
	Problem string
}

// servicesData reads the registration stream for the request's filters
// (cluster, service, protocol). A filter that is not a valid name is
// reported in the document, and a missing stream is an empty document;
// the error is any other failure to read the stream.
func (s *Server) servicesData(r *http.Request) (servicesData, *pageError) {
	q := r.URL.Query()
	v := servicesData{Stream: registration.DefaultStream, StreamExists: true, Clusters: []serviceCluster{}, DroppedEntries: []registration.Skipped{},
		Cluster: strings.TrimSpace(q.Get("cluster")), Service: strings.TrimSpace(q.Get("service")), Protocol: strings.TrimSpace(q.Get("protocol"))}
	if err := registration.ValidFilter(v.Cluster, v.Protocol, v.Service, ""); err != nil {
		var fe *registration.FilterError
		if !errors.As(err, &fe) {
			return v, &pageError{http.StatusBadRequest, "services: " + err.Error()}
		}
		v.FilterError = fe.Reason()
		return v, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), servicesTimeout)
	defer cancel()
	recs, skipped, err := registration.Query(ctx, s.js, v.Stream, s.regTrust, v.Cluster, v.Protocol, v.Service, "")
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		v.StreamExists = false
		return v, nil
	case err != nil:
		return v, &pageError{http.StatusServiceUnavailable, "services: " + err.Error()}
	}
	v.Dropped = len(skipped)
	v.DroppedEntries = append(v.DroppedEntries, skipped[:min(len(skipped), maxDroppedListed)]...)
	now := s.opts.Now()
	// Query sorts by cluster, protocol, service, address and port: group
	// by cluster and service, keeping that order within a service.
	slices.SortStableFunc(recs, func(a, b registration.Record) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		return strings.Compare(a.Service, b.Service)
	})
	for _, rec := range recs {
		if n := len(v.Clusters); n == 0 || v.Clusters[n-1].Cluster != rec.Cluster {
			v.Clusters = append(v.Clusters, serviceCluster{Cluster: rec.Cluster})
		}
		c := &v.Clusters[len(v.Clusters)-1]
		if n := len(c.Services); n == 0 || c.Services[n-1].Service != rec.Service {
			c.Services = append(c.Services, serviceGroup{Service: rec.Service})
			v.Services++
		}
		g := &c.Services[len(c.Services)-1]
		ep := serviceEndpoint{Host: rec.Host, Protocol: rec.Protocol, Address: rec.Address, Port: rec.Port, Endpoint: rec.Address,
			Priority: rec.Priority, TTL: rec.TTL, Published: rec.Published.UTC(), AgeSeconds: int64(max(now.Sub(rec.Published), 0) / time.Second),
			Signer: rec.Signer, Annotations: rec.Annotations}
		if rec.Port > 0 {
			ep.Endpoint = net.JoinHostPort(rec.Address, strconv.Itoa(rec.Port))
		}
		g.Endpoints = append(g.Endpoints, ep)
		v.Endpoints++
	}
	return v, nil
}

func (s *Server) servicesPage(w http.ResponseWriter, r *http.Request) {
	data, perr := s.servicesData(r)
	v := servicesView{layout: s.layout("Services", "services"), servicesData: data}
	if perr != nil {
		v.Problem = perr.msg
	}
	s.render(w, "services", v)
}

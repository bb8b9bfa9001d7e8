// Package gossrun validates the goss rules of health checks with the goss
// library, in process: the rules are read as goss reads a spec (without
// goss's own templating: they were expanded like every other property
// before they got here) and validated one test at a time. It implements
// engine.GossRunner and is given only to the engines of local manifests
// (ccm-agent apply, the continuous agent); the fleet agent's engine has
// none and refuses goss rules.
package gossrun

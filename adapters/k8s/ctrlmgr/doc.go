// Package ctrlmgr runs opbus inside a controller-runtime manager.
package ctrlmgr

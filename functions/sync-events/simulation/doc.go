// Package simulation holds the system simulations of the events API: many
// devices and execution environments racing on one key or one user's head
// (races), pullers syncing while commits land late and out of order
// (stream), what a mutation costs in DynamoDB calls as environments
// multiply (cost), and two Regions under a replicator with lag and a
// failover (regions). Each drives the real handler on a real
// DynamoDB-compatible backend through package apitest and holds every
// answer and stored item to the invariants.
//
// They are the slow suites: make test leaves the package out, and
// make test-full and CI run them, with the race detector, on kumo, moto
// and dynoxide. The package has no code of its own.
package simulation

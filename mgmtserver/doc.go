// SPDX-License-Identifier: Apache-2.0

// Package mgmtserver is a small xDS management server for demos, tools and
// tests, and builders of the resources it serves. It moved here from
// package testutil, which keeps its names for tests.
package mgmtserver

module github.com/opbus/opbus/test/consumer

go 1.26.0

require golang.org/x/mod v0.41.0

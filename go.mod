module github.com/opbus/opbus

go 1.26.0

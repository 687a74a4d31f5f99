module example.com/fwgo

go 1.19

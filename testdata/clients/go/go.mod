module bankclient

go 1.25.0

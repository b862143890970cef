package evm

// ChangedBlocks is changedBlocks, for the black-box tests of the bisection.
var ChangedBlocks = changedBlocks

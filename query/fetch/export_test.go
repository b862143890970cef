package fetch

// ChangedBlocks is changedBlocks, for the black-box tests of the bisection.
var ChangedBlocks = changedBlocks

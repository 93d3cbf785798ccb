package proc

// EnvNoInit, set to anything, keeps mcpgen from acting as init when it is
// PID 1 (see Init): for an image whose entrypoint has an init of its own
// in front.
const EnvNoInit = "MCPGEN_NO_INIT"

// The lesson's should-retry.js, as written (it needs no database).
function shouldRetry(outcome) {
  if (outcome === "network") return true;
  return outcome === 409 || outcome === 429 || outcome >= 500;
}

for (const outcome of ["network", 201, 400, 409, 422, 429, 500, 503]) {
  console.log(String(outcome).padEnd(8), shouldRetry(outcome));
}

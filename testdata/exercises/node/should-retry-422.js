// Wrong on purpose: retries a 422, which fails the same way every time.
function shouldRetry(outcome) {
  if (outcome === "network") return true;
  return outcome === 409 || outcome === 422 || outcome === 429 || outcome >= 500;
}

for (const outcome of ["network", 201, 400, 409, 422, 429, 500, 503]) {
  console.log(String(outcome).padEnd(8), shouldRetry(outcome));
}
